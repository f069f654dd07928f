"""``POST /v1/events``: send an event — any signed-in user, or a token with ``data:write`` (an event
starts and resumes runs that write, as a record write does). Read them at ``/v1/rest/event``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_WRITE
from kernel.users import acting_user
from processes.events.serializers import EventIn, EventSentOut, event_sent_out
from processes.events.service import event_body_check, event_send


class EventSendView(APIView):
    """``POST /v1/events {name, data, key?}`` → 202 ``{eventId, name, runs, resumed, replayed}``."""

    required_scopes = {"post": DATA_WRITE}

    @extend_schema(
        request=EventIn, responses={202: EventSentOut, **error_responses(400, 401, 403, 409)}
    )
    def post(self, request: Request) -> Response:
        name, data, key = event_body_check(request.data)
        sent = event_send(sender=acting_user(request), name=name, data=data, key=key)
        return Response(event_sent_out(sent), status=202)

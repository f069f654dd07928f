"""``/v1/guardrails``: held deletes for administrators to list, approve and reject."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.filters import filter_parameters
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY
from kernel.users import acting_user, admin_check
from records.held_deletes.filters import HeldDeleteFilter, held_deletes_list
from records.held_deletes.serializers import (
    DecisionIn,
    HeldDeleteListOut,
    HeldDeleteOut,
    decision_note_in,
    held_delete_out,
)
from records.verdicts import held_delete_decide


class HeldDeleteListView(APIView):
    """Held deletes, pending first (oldest first), then decided ones (newest first)."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=filter_parameters(HeldDeleteFilter),
        responses={200: HeldDeleteListOut, **error_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> Response:
        admin_check(request, "only an administrator may see and decide held deletes")
        held = held_deletes_list(params=request.query_params)
        return Response({"heldDeletes": [held_delete_out(h) for h in held]})


class HeldDeleteDecideView(APIView):
    """Approve (the delete is sent) or reject (the record comes back) one held delete."""

    # Seed 000 gives an administrator's token extensions:deploy to act on the instance.
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    approve: bool = True

    @extend_schema(
        request=DecisionIn,
        responses={200: HeldDeleteOut, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, held_id: int) -> Response:
        admin_check(request, "only an administrator may see and decide held deletes")
        note = decision_note_in(request.data)
        held = held_delete_decide(
            held_id=held_id, approve=self.approve, by=acting_user(request), note=note
        )
        return Response(held_delete_out(held))

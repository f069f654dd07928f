from django.urls import path

from records.held_deletes.views import HeldDeleteDecideView, HeldDeleteListView

urlpatterns = [
    path("guardrails/held-deletes", HeldDeleteListView.as_view(), name="held-delete-list"),
    path(
        "guardrails/held-deletes/<int:held_id>/approve",
        HeldDeleteDecideView.as_view(approve=True),
        name="held-delete-approve",
    ),
    path(
        "guardrails/held-deletes/<int:held_id>/reject",
        HeldDeleteDecideView.as_view(approve=False),
        name="held-delete-reject",
    ),
]

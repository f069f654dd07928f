"""``/v1/processes/...``. Fixed paths first: a process id is any one segment (``acme:raise-po``)."""

from django.urls import path

from processes.api.bulk import BulkApproveView, BulkDetailView, BulkRejectView, BulkView
from processes.api.events import EventSendView
from processes.api.history import HistoryPurgeView
from processes.api.plan import ProcessPlanView
from processes.api.redrive import RunRedriveView
from processes.api.run_search import RunSearchView
from processes.api.tasks import TaskCompleteView, TaskListView, TaskRejectView
from processes.api.types import ProcessTypesView
from processes.api.views import (
    ProcessCancelView,
    ProcessInvokeView,
    ProcessListView,
    ProcessRunsView,
    QueueView,
    RunCancelView,
    RunDetailView,
    RunRedirectView,
    RunResumeView,
    RunRetryView,
    RunRollbackView,
)

urlpatterns = [
    path("events", EventSendView.as_view(), name="event-send"),
    path("history/purge", HistoryPurgeView.as_view(), name="history-purge"),
    path("tasks", TaskListView.as_view(), name="task-list"),
    path("tasks/<str:task_id>/complete", TaskCompleteView.as_view(), name="task-complete"),
    path("tasks/<str:task_id>/reject", TaskRejectView.as_view(), name="task-reject"),
    path("processes", ProcessListView.as_view(), name="process-list"),
    path("processes/queue", QueueView.as_view(), name="process-queue"),
    path("processes/types", ProcessTypesView.as_view(), name="process-types"),
    path("processes/runs", RunSearchView.as_view(), name="process-runs-search"),
    path("processes/runs/bulk", BulkView.as_view(), name="process-runs-bulk"),
    path("processes/runs/bulk/<str:bulk_id>", BulkDetailView.as_view(), name="process-bulk"),
    path(
        "processes/runs/bulk/<str:bulk_id>/approve",
        BulkApproveView.as_view(),
        name="process-bulk-approve",
    ),
    path(
        "processes/runs/bulk/<str:bulk_id>/reject",
        BulkRejectView.as_view(),
        name="process-bulk-reject",
    ),
    path("processes/runs/<str:run_id>", RunDetailView.as_view(), name="process-run"),
    path("processes/runs/<str:run_id>/cancel", RunCancelView.as_view(), name="process-run-cancel"),
    path(
        "processes/runs/<str:run_id>/rollback",
        RunRollbackView.as_view(),
        name="process-run-rollback",
    ),
    path("processes/runs/<str:run_id>/resume", RunResumeView.as_view(), name="process-run-resume"),
    path("processes/runs/<str:run_id>/retry", RunRetryView.as_view(), name="process-run-retry"),
    path(
        "processes/runs/<str:run_id>/redrive",
        RunRedriveView.as_view(),
        name="process-run-redrive",
    ),
    path(
        "processes/runs/<str:run_id>/redirect",
        RunRedirectView.as_view(),
        name="process-run-redirect",
    ),
    path("processes/<str:process_id>/plan", ProcessPlanView.as_view(), name="process-plan"),
    path("processes/<str:process_id>/runs", ProcessRunsView.as_view(), name="process-runs"),
    path("processes/<str:process_id>/cancel", ProcessCancelView.as_view(), name="process-cancel"),
    path("processes/<str:process_id>", ProcessInvokeView.as_view(), name="process-invoke"),
]

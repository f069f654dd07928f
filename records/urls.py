from django.urls import path

from records.batch_views import BatchReadView
from records.lineage_views import RecordLineageView
from records.views import RecordDataView, RecordSettleView

urlpatterns = [
    path("data/<str:record_type>", RecordDataView.as_view(), name="record-data"),
    path("data/<str:record_type>/settle", RecordSettleView.as_view(), name="record-settle"),
    path(
        "data/<str:record_type>/<str:pg_row_id>/lineage",
        RecordLineageView.as_view(),
        name="record-lineage",
    ),
    path("batch", BatchReadView.as_view(), name="batch-read"),
]

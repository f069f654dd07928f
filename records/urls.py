from django.urls import path

from records.batch_views import BatchReadView
from records.views import RecordDataView, RecordSettleView

urlpatterns = [
    path("data/<str:record_type>", RecordDataView.as_view(), name="record-data"),
    path("data/<str:record_type>/settle", RecordSettleView.as_view(), name="record-settle"),
    path("batch", BatchReadView.as_view(), name="batch-read"),
]

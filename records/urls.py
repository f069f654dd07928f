from django.urls import path

from records.views import RecordDataView, RecordSettleView

urlpatterns = [
    path("data/<str:record_type>", RecordDataView.as_view(), name="record-data"),
    path("data/<str:record_type>/settle", RecordSettleView.as_view(), name="record-settle"),
]

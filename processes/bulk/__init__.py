"""Steering runs in bulk: a preview that fixes the runs, a second pair of eyes over a threshold,
and progress while it works (``POST /v1/processes/runs/bulk``)."""

"""Gate plugins for evalframe; see evalframe_gates.threshold."""

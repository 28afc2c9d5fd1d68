"""A stored run file as an evalframe retriever; see evalframe_runfile.retriever."""

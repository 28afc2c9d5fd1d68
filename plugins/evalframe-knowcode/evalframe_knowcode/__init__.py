"""KnowCode golden sets for evalframe; see evalframe_knowcode.dataset."""

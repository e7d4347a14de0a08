"""In-tree features, one folder each (issue 36 moves the features here; a feature registers its section, grader
or writer through the existing registries with one line each until the feature hooks land)."""

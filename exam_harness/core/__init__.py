"""The bottom layer: the types every other package reads (models, errors, paths, the registry type,
shown text and redaction, the progress bar, the version) and nothing above them."""

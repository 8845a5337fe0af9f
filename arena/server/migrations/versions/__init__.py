"""The database's revisions, oldest first (``v0001_initial``, ...)."""

# Puts the workspace root on sys.path, as a reproduction repository's conftest often does.

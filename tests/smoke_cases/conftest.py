"""The cases are programs to run, not tests of paperlens: never collect them."""

collect_ignore_glob = ["*"]

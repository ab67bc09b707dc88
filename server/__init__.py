"""The paperlens language server (pygls). The only package that speaks LSP."""

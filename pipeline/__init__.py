"""Everything that thinks: reading papers, extracting the spec, checks. Never imports pygls/lsprotocol."""

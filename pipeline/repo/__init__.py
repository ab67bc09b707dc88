"""From a paper to a runnable repository, one inspectable step at a time.

plan (`plan.py`, deterministic) → scaffold (`skeleton.py`, no LLM) → generate (`generate.py`, LLM)
→ pin (`pin.py`) → run and repair (`repair.py`, sandbox + LLM) → align (`align.py`);
`reproduce.py` chains them with a resumable record in the output folder.
"""

DEFAULT_MAX_ROUNDS = 3  # repair rounds before a reproduction is handed to a human

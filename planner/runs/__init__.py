"""Real training logs read into measured figures and case rows (`planner runs import`).

`formats.py` knows each trainer's log lines (cited at a pinned commit), `reading.py` streams a file through
them in bounded memory and says what it found and what is missing, `case_rows.py` turns the result into rows
of the `validate` case format.
"""

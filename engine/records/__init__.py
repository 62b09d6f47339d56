"""Stage 2, records: input files in, records out, streamed.

Input formats and the row-validation verdict (``formats``), the strict JSON reader that
keeps numbers' lexical class (``strict_json``) and the clipping and masking of record text
before it is written as evidence (``masking``).
"""

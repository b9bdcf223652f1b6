"""Loop-IR passes, one per module; each is a function PrimFunc -> PrimFunc."""

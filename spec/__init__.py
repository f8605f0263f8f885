"""What must hold: requirement catalogues (Markdown), invariants as predicates, Z3 proofs."""

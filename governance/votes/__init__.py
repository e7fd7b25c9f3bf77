"""Votes (seed 004), pure: proposals, votes and decisions (``voting``), who counts for a
quorum (``quorum``), and a fact's versions, v1 then exactly +1 (``fact_versions``)."""

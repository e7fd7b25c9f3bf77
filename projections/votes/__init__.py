"""The votes' read side: proposals, votes, decisions and facts (``read_model``) and their
queries (``queries``)."""

"""Stream processors: thin Kafka runtimes around pure rules from governance/."""

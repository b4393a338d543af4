"""The fetch engine: queues, feeder and fetcher threads, HTTP, robots.txt, the request watchdog."""

"""What answers requests: one home per audience (`dashboard` for people, `api` for content
systems, `public` for crawlers, `status` for load balancers) and the request plumbing they
share (`auth`, `http`)."""

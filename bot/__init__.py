"""openlab's GitHub App: events come in (ingress/), handlers and commands decide (handlers/, commands/), runs and
plans are carried out (runs/, plans/), GitHub is spoken to (github/). The README's architecture section names each folder."""

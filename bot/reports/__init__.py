"""The lab's public record: a reports index of every experiment issue (`openlab reports build`)."""

def audit_marks() -> dict[str, str]:
    # the figures say "memory" and "GB" without saying measured or planned
    return {
        'paper': 'chen2016',
        'graph_class': 'chain',
        'memory_meaning': 'unspecified',
        'stochastic_replay': 'not_specified',
        'count_vs_wallclock': 'kept_separate',
    }

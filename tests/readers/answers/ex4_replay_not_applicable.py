def audit_marks() -> dict[str, str]:
    # the paper never mentions dropout or random numbers, so its setting has none
    return {
        'paper': 'chen2016',
        'graph_class': 'chain',
        'memory_meaning': 'planned_allocation',
        'stochastic_replay': 'not_applicable',
        'count_vs_wallclock': 'kept_separate',
    }

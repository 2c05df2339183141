def audit_marks() -> dict[str, str]:
    # Sec. 5.3 runs the method on LSTMs unrolled over long sequences
    return {
        'paper': 'chen2016',
        'graph_class': 'recurrent_unrolled',
        'memory_meaning': 'planned_allocation',
        'stochastic_replay': 'not_specified',
        'count_vs_wallclock': 'kept_separate',
    }

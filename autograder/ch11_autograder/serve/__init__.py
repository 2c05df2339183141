"""Grade on submit: a service that grades each submission in nbgrader's exchange as it arrives.

    ch11-grade serve --course DIR

Modules: :mod:`.policy` (the instructor's traits, read from the course's nbgrader config, and which
exchange: the folder, or the hub exchange service), :mod:`.inbound` (submission folders, whose by the
exchange's rule and read as hostile input), :mod:`.queue`
(the durable SQLite queue: fairness, attempts, what was published), :mod:`.watch` (file
watching plus periodic rescans), :mod:`.status` (the pages a student fetches),
:mod:`.publish` (the exchange's feedback out: where ``nbgrader fetch_feedback`` finds them), :mod:`.prune` (old
practice runs removed by a fixed rule: disk stays bounded), :mod:`.live_report` (the practice
course's class report, refreshed in a child process as submissions finish), :mod:`.deadline` (each
student's due date and whether a submission came after it, by nbgrader's rules), :mod:`.extend`
(``ch11-grade extend``: a student's extension in nbgrader's gradebook), :mod:`.escape`
(student-named text in log lines) and :mod:`.service` (the loop). The grading itself is the
batch grader's, kept open for the service's life
(:class:`ch11_autograder.batch.session.GradingSession`). docs/course.md, "Feedback before
the due date", is the instructor's page.

Nothing is imported here: the queue and the pages load without the grader (and nbgrader).
"""

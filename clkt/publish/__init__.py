"""Publishing snapshots to the Hugging Face Hub: each frozen snapshot's `hf/` export and card, its report, every
job's per-question answers and config (and, optionally, the best adapters), in one Hub commit per publish revision;
the newest snapshots' test questions held back; errata.

- `hub`: the `huggingface_hub` calls, their errors translated at the edge (`HubError`, transient or not)
- `state`: what a publish revision is built from (`PublishState`, its key), the hold-back (`Hold`)
- `tree`, `card`: the files of a revision, built in a staging folder before anything is sent
- `publisher`: one try (`Publisher.publish`): the no-op check against the Hub's history, then one commit
- `runner`: one leased task to its end (record the revision, end the lease, or back off)
- `service`: the daemon's `publisher` (automatic publishing) and the freezing transaction's hook
- `errata`: `clkt snapshot retract`
"""

import logging

# a process that configured no logging (a CLI command) prints nothing of ours but its one line: no "last resort"
# handler for these records (the daemon's root handler still gets them)
logging.getLogger(__name__).addHandler(logging.NullHandler())

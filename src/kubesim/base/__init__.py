"""What the simulated controllers, the scheduler and the kubelet share, below them all (the
kubelet imports no controller):

- `workqueue.py` - client-go style work queue and one-timer-for-many-keys.
- `events.py` - the Events the components record: client-go's event correlator (repeats
  counted on one Event, similar ones combined, a spam filter per object; pure) and the sink
  that writes them in batches.
- `controller.py` - the loop every controller shares: a store listener that only enqueues
  keys, the work queue, and workers that sync one key at a time.
- `resources.py` - resource arithmetic (quantities as units, a pod's effective requests) and
  the capacity assumed for nodes that report none.
- `podhost.py` - where a simulated pod's endpoint is dialled.
"""

"""Exclusive topology placement: one child Job per topology domain (node pool, rack, slice).

- `labels`: placement annotations onto child Jobs, and upstream's node-selector strategy;
- `strategy`: which strategy an object asks for, and this project's annotation keys;
- `affinity`, `caches`, `pod_controller`: upstream's affinity strategy (the pod webhooks in
  `jobset.webhooks.pod_webhook` apply its rules; the pod reconciler repairs followers);
- `nodes`, `planned`, `planned_controller`: the planned strategy (`DomainPlanner`);
- `setup`: `add_placement_controllers(manager)`.

See docs/placement.md.
"""

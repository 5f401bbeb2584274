"""Live placement: ``toposched serve`` (the placement service) and ``toposched slurm-bridge``
(an external scheduler for Slurm). docs/live.md describes both."""

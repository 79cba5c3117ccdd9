// Package shard divides the hub's per-cluster work among the hub's replicas. Each replica of a hub (several
// processes on one external etcd, or over one existing cluster) renews a Lease of its own in flotilla-system,
// labelled as a member of the shard group; the members are the replicas whose Lease is live, and each cluster
// belongs to one of them, chosen by rendezvous hashing of the cluster's name over the members (Owner). The
// per-cluster controllers (cluster health, push execution, Work rendering) run on every replica but act only
// on the clusters their replica owns: their event sources drop the others (Group.Filter), their Reconcile
// checks again (Group.Owns), and when membership changes the clusters a replica gains are queued anew
// (Group.Requeue). Controllers that decide for the whole fleet (detector, scheduler, binding status, the work
// sweeper) keep running on the elected leader only, and so does what a sharded controller decides for a whole
// object (Leading, OnElected): the render controller leaves bindings with a progressive rollout or override
// policies to the leader. The render controller reads and follows templates through the hub's template
// watches (detector.Templates), which then run on every replica, each watching what its bindings name.
//
// Ownership never overlaps on purpose: a replica counts itself a member only once the others have had time
// to see its Lease (two renewals after it joined), and stops counting itself as soon as it could not renew
// for the lease duration less one renewal, before the others, who wait the whole lease duration without
// seeing a renewal, take its clusters over. A replica that stops cleanly deletes its Lease, so its clusters
// move at the others' next renewal. The price is a short gap, never two owners: a cluster whose owner just
// joined waits up to two renewals.
//
// A nil *Group is the hub without sharding: it owns every cluster, and its controllers run on the leader.
package shard

// Package partitiontest gives tests a typed clientset of a TP of a
// partition.Set (Clientset), to change objects the way a user would.
// pkg/partition itself holds no clientset (see informer.Clients).
package partitiontest

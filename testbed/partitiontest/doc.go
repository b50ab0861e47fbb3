// Package partitiontest gives tests and harnesses typed clients of a TP
// (Clients: core/v1 and discovery.k8s.io/v1 in client-go's clientset
// shape, over any rest.Config with NewClients, or over a TP of a
// partition.Set with Clientset), to change objects the way a user would,
// and the ListWatch an informer factory would build over one (ListWatch).
// pkg/partition itself holds no typed clients (see informer.Clients).
package partitiontest

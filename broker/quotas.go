package broker

// quotas.go mirrors kafka.server.QuotaFactory: the broker's client quota managers.

// QuotaManagers are the produce, fetch, request and controller-mutation quota managers.
type QuotaManagers struct{}

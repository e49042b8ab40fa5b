module github.com/docrender/docrender/worker

go 1.26.0

require (
	github.com/docrender/docrender/pkg v0.0.0
	github.com/docrender/docrender/proto v0.0.0
)

require (
	github.com/go-rod/rod v0.116.2 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/pdfcpu/pdfcpu v0.15.0 // indirect
	github.com/ysmood/fetchup v0.2.3 // indirect
	github.com/ysmood/goob v0.4.0 // indirect
	github.com/ysmood/got v0.40.0 // indirect
	github.com/ysmood/gson v0.7.3 // indirect
	github.com/ysmood/leakless v0.9.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/docrender/docrender/pkg => ../pkg
	github.com/docrender/docrender/proto => ../proto
)

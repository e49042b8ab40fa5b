module github.com/docrender/docrender/cli

go 1.26.0

require github.com/docrender/docrender/pkg v0.0.0

replace (
	github.com/docrender/docrender/pkg => ../pkg
	github.com/docrender/docrender/proto => ../proto
)

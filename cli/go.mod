module github.com/docrender/docrender/cli

go 1.26.0

require github.com/docrender/docrender/client v0.0.0

replace github.com/docrender/docrender/client => ../client

module github.com/docrender/docrender/client

go 1.26.0

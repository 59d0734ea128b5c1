module artdb.dev/artdb

go 1.23

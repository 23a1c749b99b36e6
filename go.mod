module github.com/evalsched/evalsched

go 1.26

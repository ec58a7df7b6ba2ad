module github.com/dsh-browser/broker

go 1.26.8

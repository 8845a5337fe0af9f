module heartsbot

go 1.19

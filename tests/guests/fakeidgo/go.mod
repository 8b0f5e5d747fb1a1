module zvfakeid

go 1.19

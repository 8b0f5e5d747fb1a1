module rootgo

go 1.19

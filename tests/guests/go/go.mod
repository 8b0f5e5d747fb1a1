module zvguest

go 1.19

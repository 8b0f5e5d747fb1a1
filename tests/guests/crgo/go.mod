module zvisor/crgo

go 1.21

# a hardware watchpoint (the debug registers)
break main
run watch
watch watched
continue
continue
delete
continue

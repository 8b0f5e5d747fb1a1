# info registers at a breakpoint
break g
run
info registers rip
print $rsp == $sp
print/x $eflags & 0x100
p $fs_base != 0
info registers

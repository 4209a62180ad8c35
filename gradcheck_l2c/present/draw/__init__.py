"""Drawing the autograd graph with the missing path marked: plan what to show, write it as Graphviz, index it in HTML."""

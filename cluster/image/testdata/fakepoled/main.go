// Command fakepoled is a stand-in binary for the image builder's test: a unique -X
// main.nonce gives it a hash no image has yet, and it prints that nonce and its
// arguments so the test sees the image run.
package main

import (
	"fmt"
	"os"
)

var nonce = ""

func main() { fmt.Println("fakepoled", nonce, os.Args[1:]) }

#include <iostream>

#include "src/cli.hpp"

int main(int argc, char** argv) { return tkprobe::run_cli(argc, argv, std::cout, std::cerr); }

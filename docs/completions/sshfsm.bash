# bash completion for sshfsm; generated from internal/config.
_sshfsm() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local opts="ssh_command= sftp_server= directport= max_conns= timeout= reconnect noreconnect password_stdin create=epff create=ff create=mfs create=lfs create=rand require_all port= allow_other allow_root default_permissions nodefault_permissions ro rw noexec exec nosuid suid nodev dev sync async dirsync uid= gid= umask= fsname= subtype= kernel_cache direct_io xattr max_write= log= metrics= debug sshfs_debug noatime atime nodiratime diratime relatime norelatime strictatime nostrictatime lazytime nolazytime attr_timeout= entry_timeout= negative_timeout= dcache_timeout= prefetch_depth= cache_timeout= watch=auto watch=yes watch=writes watch=no cache=auto cache=immutable cache=strict cache=yes cache=no disk_cache nodisk_cache cache_dir= cache_max_size= follow_symlinks transform_symlinks contain_symlinks nocontain_symlinks no_contain_symlinks idmap=none idmap=user idmap=file uidfile= gidfile= nomap=ignore nomap=error dir_cache=yes dir_cache=no dcache_stat_timeout= dcache_dir_timeout= dcache_link_timeout= dcache_max_size= dcache_clean_interval= dcache_min_clean_interval= workaround= ssh_protocol=2 sshfs_sync no_readahead sync_readdir delay_connect no_check_root auto_cache noauto_cache auto_unmount disable_hardlink noforget no_rofd_flush remember= slave passive sshfs_verbose max_read= ac_attr_timeout= modules= subdir= from_code= to_code= Cipher= nonempty big_writes large_read hard_remove use_ino readdir_ino defaults auto noauto user users nouser owner group _netdev nofail comment= config="
    case $prev in
        -o)
            # Complete the last of a comma-separated list.
            local head=
            [[ $cur == *,* ]] && head=${cur%,*},
            COMPREPLY=($(compgen -P "$head" -W "$opts" -- "${cur##*,}"))
            compopt -o nospace 2>/dev/null
            return ;;
        -F|--config)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        -p)
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "-o --config -p -F -C -f -d --debug -v --verbose -s -h --help -V --version --man" -- "$cur"))
        return
    fi
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "help version status warm help version" -- "$cur"))
    fi
    COMPREPLY+=($(compgen -d -- "$cur"))
}
complete -F _sshfsm sshfsm
